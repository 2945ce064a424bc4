"""bitsift.pipeline"""
