from collsim.cli import entry

entry()
