"""The lesson page: a lesson file served on 127.0.0.1 as a page with its math, labs, knowledge checks and checklist.

Modules: reader (a lesson's text -> a Page of blocks), server (serves a Page, its labs and its web/ files).
Run it with `physai lesson open PATH`.
"""
