"""Train one translation run (major_minor §V-D4): ``scripts/train.py`` with the translation
task added to the task kinds (``rnnrepro.translation_task``); the same options and outputs.

Called by the ``train_translation`` rule. Its own entry point keeps the translation task out of
the language models' code digest: editing it reruns only the translation runs.
"""

from __future__ import annotations

import sys

import rnnrepro.translation_task  # noqa: F401  (adds the "translation" task kind)
from rnnrepro.scripts.train import main

if __name__ == "__main__":
    sys.exit(main())
