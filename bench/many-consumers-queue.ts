/** The queue of consumer `index` of an app with `count` consumers under `prefix`. */
export function manyConsumersQueue(prefix: string, count: number, index: number): string {
  return `${prefix}.many-${count}.${index}`;
}
