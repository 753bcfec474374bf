"""Entry points called by the pipeline rules: ``python -m rnnrepro.scripts.<name>``."""
