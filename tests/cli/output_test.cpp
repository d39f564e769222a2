// Output writing: atomic, confined, never after an error (filled in by issue 7's output work).
