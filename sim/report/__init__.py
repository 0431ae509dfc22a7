"""What a person reads of a run: its story, its figures and the self-contained HTML page, all
from the run directory (summary.json, events.jsonl and, once analysed, analysis.json)."""
