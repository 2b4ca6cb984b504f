"""Qualitative coding (issue 22): coding projects of debates, a code hierarchy, several coders,
passages coded by character offsets, agreement between coders, and REFI-QDA exchange.

  * ``model``      the plain data of a coding project (codes, coders, sources, codings, memos) and
                   how a debate becomes one plain-text source (turn spans);
  * ``agreement``  agreement between coders (percent, Cohen's and Fleiss' kappa, Krippendorff's
                   alpha, Gwet's AC1) through maintained libraries;
  * ``refi``       REFI-QDA exchange: QDPX projects and QDC codebooks, written and read.

Nothing here imports streamlit or calls a model.
"""
