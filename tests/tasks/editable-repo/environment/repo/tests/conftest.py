pytest_plugins = ["calc.testing"]
