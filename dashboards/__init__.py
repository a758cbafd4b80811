"""The Dash web app (``hvd-analyze serve``): uploads, runs, and pages drawn from the analyzer."""
