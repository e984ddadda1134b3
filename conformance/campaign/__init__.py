"""Certification campaigns (``dtnconform campaign PLAN``): a plan of
implementation pairs, links, sizes and replicates (plan), run run by run
into a SQLite database that a killed campaign resumes from (store,
engine), each run's figures (metrics) and the campaign's report (report).
"""
