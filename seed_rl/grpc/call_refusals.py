"""Refusals of one inference call that the same call, sent again later, can pass.

The learner refuses a bad call for that caller alone (the batch runs for the others). Most
refusals say what is wrong with the actor (env ids the learner does not have, inputs it cannot
use), and sending the call again would change nothing. Two kinds pass once something else
changes, and their messages carry a phrase of this module so that an actor can tell them apart
(this module imports no TensorFlow, for actors):
- env ids that a live actor on another connection owns (INVALID_ARGUMENT from the learner's
  door): they pass once that connection closes, or once it stays silent for the learner's
  --actor_takeover_grace_secs;
- a request over the server's limit on bytes in flight while other requests hold it
  (RESOURCE_EXHAUSTED, "retry later"): it passes once those are answered.
"""

from seed_rl.grpc import errors

#: Part of the learner's refusal of env ids whose owner still lives on another connection.
OWNED_ENV_IDS = 'are owned by a live actor on another connection'
#: Part of the server's refusal of a request that would pass its limit on bytes in flight
#: while other requests hold that limit (one larger than the limit itself never passes).
RETRY_LATER = 'retry later'


def is_retryable(error: BaseException) -> bool:
  """Whether `error`, raised by a client call, is a refusal that the same call can pass later."""
  message = str(error)
  if isinstance(error, errors.error_classes(errors.INVALID_ARGUMENT)):
    return OWNED_ENV_IDS in message
  if isinstance(error, errors.error_classes(errors.RESOURCE_EXHAUSTED)):
    return RETRY_LATER in message
  return False
