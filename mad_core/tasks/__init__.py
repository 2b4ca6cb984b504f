"""Tasks MAD Lab can debate and score (issue 9): generated puzzles and written task sets.

  * ``kks``          Knight-Knave-Spy puzzles (seed 001): generator, brute-force solver, JSON format.
  * ``sets``         task sets written for MAD Lab (counter-intuitive arithmetic, multiple choice,
                     yes/no), each item with its answer.
  * ``generated``    generated task sets for experiments: ``kks`` and ``rg:<dataset>``
                     (reasoning-gym, imported only when asked for).
  * ``kks_cli``      ``python -m mad_core.tasks.kks solve FILE | generate N``.
  * ``answer_types`` reading and comparing answers per task type (letter, number, yes/no,
                     KKS assignment, free text).

UI-free and model-free: nothing here calls a model or imports streamlit.
"""
