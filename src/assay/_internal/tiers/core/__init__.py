"""The grading core every tier shares, and which imports no tier: the per-grading context
and the controller's facts (`controller`), the agent phase and the container -> host crossing
through the firewall (`intake`), the agent's workdir filled from the task's image (`seed`), the
overlap of a judge's work with the candidate's (`overlap`), and where the trusted in-container
programs live on the host (`paths`)."""
