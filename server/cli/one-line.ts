/**
 * One line a terminal shows as it is: line breaks become spaces, and any other control
 * character (an escape sequence from a bad file) is printed escaped (`\x1b`), so text read from
 * a file or the database can never move the cursor or recolour the terminal. Its own module so
 * the program (`program.ts`) and its commands (`commands/forecast.ts`) share it without
 * importing each other.
 */
export function oneLine(text: string): string {
  return text
    .replace(/\s*\n\s*/g, " ")
    .trim()
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}
