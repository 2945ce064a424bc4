"""bitsift.index"""
