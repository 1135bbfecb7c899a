import { Get, Injectable, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ConsoleContext } from './console-context';
import { ConsoleFigures } from './console-figures';
import { sendHtml } from './console-http';
import { layout } from './views/layout.view';
import { overviewView } from './views/overview.view';

/** The overview: every consumer queue and every dead-letter queue with its figures. */
@Injectable()
export class ConsoleOverviewController {
  constructor(
    private readonly console: ConsoleContext,
    private readonly figures: ConsoleFigures,
  ) {}

  @Get()
  async overview(@Req() request: Request, @Res() response: Response): Promise<void> {
    const frame = this.console.frame(request);
    const overview = await this.figures.overview();
    sendHtml(response, layout(frame, 'Overview', 'overview', overviewView(frame, overview)));
  }
}
