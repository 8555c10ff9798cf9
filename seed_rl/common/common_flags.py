"""Flags shared by the actor and the learner of every seed_rl entry point.

Importing this module defines the flags; the values are read through `absl.flags.FLAGS`.
"""

from absl import flags

flags.DEFINE_string('logdir', '/tmp/agent', 'TensorFlow log and checkpoint directory.')
# Google Cloud passes the job directory as --job-dir; it names the same directory.
flags.DEFINE_alias('job-dir', 'logdir')
flags.DEFINE_string('server_address', 'localhost:8686',
                    'Address of the learner: the learner listens on it, actors connect to '
                    'it. host:port, [::]:port, unix:/path, or shm:NAME (shared memory, for '
                    'actors on the learner\'s machine). A comma-separated list, e.g. '
                    'localhost:8686,shm:run1: the learner serves every address of it, an actor '
                    'connects to its first shm: address, else its first.')
flags.DEFINE_enum('run_mode', None, ['learner', 'actor'],
                  'Whether this process is the learner or an actor.')
flags.DEFINE_integer('num_eval_envs', 0,
                     'Number of environments (the highest ids) used only for evaluation.')
flags.DEFINE_integer('env_batch_size', 1,
                     'Environments per actor; one inference call carries all of them.')
flags.DEFINE_integer('num_envs', 4,
                     'Total number of environments over all actors '
                     '(number of actors x env_batch_size).')
flags.DEFINE_integer('num_action_repeats', 1,
                     'Times each action is repeated (frame skip). Used to count frames and '
                     'to create environments.')
flags.DEFINE_integer('seed', None,
                     'If set, seeds TensorFlow on the learner and environment i with seed + i '
                     'on the actors (reproducible experiments).')
# Actor flags.
flags.DEFINE_integer('task', 0, 'Index of this actor; it runs environments '
                     '[task * env_batch_size, (task + 1) * env_batch_size).')
flags.DEFINE_bool('double_buffered_acting', False,
                  'Whether each actor splits its environments into two halves, each with its own '
                  'inference call, stepping one half while the other waits for its actions '
                  '(needs an even --env_batch_size).')
flags.DEFINE_bool('render', False, 'Whether the actor of task 0 renders its first environment.')
# RPC security (seed_rl.grpc.security turns these into Server/Client keyword arguments).
flags.DEFINE_string('grpc_token_file', None,
                    'File whose content (surrounding whitespace stripped) is a shared token: '
                    'the learner serves only actors that present it; actors send it.')
flags.DEFINE_string('grpc_tls_cert_file', None,
                    'Learner: PEM certificate chain to serve gRPC over TLS (with '
                    '--grpc_tls_key_file).')
flags.DEFINE_string('grpc_tls_key_file', None,
                    'Learner: PEM private key of --grpc_tls_cert_file.')
flags.DEFINE_string('grpc_tls_ca_file', None,
                    'Actors: PEM root CA that signed the learner certificate; enables TLS.')
