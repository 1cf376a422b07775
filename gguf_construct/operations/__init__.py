"""Layer 7: what the commands do to files -- edit, diff, split and merge, hash, sweep and the demo."""
