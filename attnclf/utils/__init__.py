"""Small helpers that know nothing of the model: strict JSON files, the allocator setting."""
