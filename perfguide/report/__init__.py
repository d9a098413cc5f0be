"""Reporting: tables, claims checked against measurements, plots and results files."""
