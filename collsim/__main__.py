from collsim import entry

entry()
