/** No instance of that saga has that correlation key (never started, or pruned). The admin API answers it with 404. */
export class SagaInstanceNotFoundError extends Error {
  override readonly name = 'SagaInstanceNotFoundError';
  constructor(
    readonly sagaName: string,
    readonly correlationKey: string,
  ) {
    super(
      `no instance of saga '${clip(sagaName)}' with correlation key '${clip(correlationKey)}' (never started, or pruned)`,
    );
  }
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}
