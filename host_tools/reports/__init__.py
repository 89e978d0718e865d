"""Report writers: Markdown tables, JSON documents and plots of the domain's result objects.

One layer above ``host_tools.target`` and below ``host_tools.cli``: a command parses its arguments,
loads its inputs once, calls the domain (identification, studies, target) and hands the result to a
writer here. Nothing here loads a description or runs a study.
"""
