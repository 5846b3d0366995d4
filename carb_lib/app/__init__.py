"""The application on top of the library: the ``carb`` command line and its command bodies,
the reproduce runner and publisher, the README/docs blocks written from ``results/``, the
notebook explorer and cost widget, the project's Jupyter kernel and notebook value records.
"""
