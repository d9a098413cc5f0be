"""One module per chapter: what its page checks, the tables and plots it builds from its
measurements, and its short answer, so that the chapter script shows a line or two for each and
the tests run them on recorded measurements."""
