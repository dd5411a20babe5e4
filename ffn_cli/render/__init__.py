"""Rendering: result data → rich renderables (tables, panels, bars) or JSON-ready dicts.

Nothing here computes a number the tool reports; it only formats what it is given.
"""
