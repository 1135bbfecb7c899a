import { Controller, Get, Header } from '@nestjs/common';
import { register } from 'prom-client';

/** `GET /metrics`: the messaging module's `rm_*` metrics and Node's process metrics, for Prometheus to scrape. */
@Controller('metrics')
export class MetricsController {
  @Get()
  @Header('Content-Type', register.contentType)
  @Header('Cache-Control', 'no-store')
  async scrape(): Promise<string> {
    return register.metrics();
  }
}
