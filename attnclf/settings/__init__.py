"""The settings, one typed object per concern (dataclasses read from the config groups in conf/), each
checked once where it is built, at the entry point, and handed down whole:

- model.py: what the classifier's LightningModule is built from (attention, model, optimizer,
  regularizer), saved nested in its checkpoint;
- data.py: which data a run reads and how (`data`), and the word vectors (`word2vec`);
- run.py: the values of the process and the run (seed, threads, resume, the Trainer's checked values,
  the run and cache folders), and what the commands that read a trained run share (`on_a_run`);
- lm.py: the language models (`lm`) and the pretraining's settings whole (`attnclf pretrain`, and a run's
  model.init_from=pretrain);
- serve.py: the server's settings (read by the app in attnclf/serving/).

Each other command's settings sit in its own module (attnclf/commands/).
"""

from attnclf.settings.attention import register_resolvers
from attnclf.settings.defaults import register_defaults

# the config groups compose from the dataclasses' defaults (attnclf/settings/defaults.py)
register_defaults()
# ${attention_name:...} in the run folder's name (conf/hydra/default.yaml)
register_resolvers()
