"""Models: the embedders (text → vectors) and the only code that calls an LLM.

- `embedders.py`: all-MiniLM-L6-v2 as int8 or float ONNX (the default), sentence-transformers, e5.
- `llm.py`: the only importer of litellm: offline switches, retries, one call shape.
- `local_llm.py`: `local/qwen2.5-1.5b`, a GGUF model run in-process.
"""
