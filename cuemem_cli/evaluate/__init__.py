"""`cuemem eval`: CueMem, its ablations and baselines measured in one run on LoCoMo and LongMemEval.

datasets → questions with gold evidence; cache → one ingested database per dataset and settings;
systems → the evidence each system hands the answer model at a budget; metrics → per-question scores
and the summary table; judge → LLM-as-judge prompts; runner → the loop that ties them together.
"""
