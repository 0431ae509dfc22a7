"""The controller: candidates and election on every broker; the controller itself comes next."""
