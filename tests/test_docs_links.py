"""The links of the agents, environments and learner pages lead somewhere: to a page in docs/
and, with an anchor, to one of its headings (GitHub's heading ids)."""

import re

import pytest

from tests.docs_tables import DOCS

PAGES = ('agents.md', 'environments.md', 'learner.md')


def heading_ids(page: str) -> set:
  """GitHub's ids of the headings of `docs/<page>`: lower case, punctuation dropped, spaces
  turned into hyphens."""
  headings = re.findall(r'^#+ (.*)$', (DOCS / page).read_text(), re.MULTILINE)
  return {re.sub(r'[^\w\- ]', '', heading.lower()).replace(' ', '-') for heading in headings}


@pytest.mark.parametrize('page', PAGES)
def test_links_lead_to_pages_and_headings(page):
  broken = []
  for target in re.findall(r'\]\(([^)\s]+)\)', (DOCS / page).read_text()):
    if re.match(r'https?://', target):
      continue
    path, _, anchor = target.partition('#')
    path = path or page
    if not (DOCS / path).is_file() or (anchor and anchor not in heading_ids(path)):
      broken.append(target)
  assert not broken, f'{page}: broken links {broken}'
