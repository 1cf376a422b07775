"""Layer 1: the container format from ``spec/`` -- the YAML as data, the struct generator and its building blocks,
the field rules and layout, the field tree, string lists, typed values and the reader's ground floor."""
