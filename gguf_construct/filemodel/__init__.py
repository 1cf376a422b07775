"""Layer 5: the file model -- :func:`load`, :class:`GGUFFile`, :class:`Tensor` and atomic saves
(``gguffile``), opening any input a command names (``inputs``), and summaries of a file (``dump``,
``modelinfo``)."""
