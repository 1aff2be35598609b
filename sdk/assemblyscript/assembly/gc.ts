// Garbage collection between calls. Placeholder, see below.
export function collectGarbage(): void {}
