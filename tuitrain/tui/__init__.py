"""The Textual app: `tuitrain` with no command. Screens call the layers below; no training logic here."""
