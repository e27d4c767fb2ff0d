"""A run's keeper: the detached supervisor (`supervise`, `supervisor`) over its workers (`workers`): one machine's ranks
under `accelerate launch` (`local_launch`), or a node agent per machine over ssh (`machine_links`, `node_agent`,
`node_command`, `mirror`); and what it writes beside the run as it goes (`samples`, `manifest`, `supervisor_log`)."""
