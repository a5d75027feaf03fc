"""ONNX models (embedders and cross-encoder rerankers) run by onnxruntime with HF tokenizers.

A model is a directory holding `model.onnx`, `tokenizer.json` and a `memproc-model.json`
manifest. Nothing here downloads at run time; `memproc models pull` builds model directories
ahead of time (see `pull.py`).
"""
