"""bitsift.filters"""
