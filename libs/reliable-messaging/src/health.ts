/**
 * Health checks, imported as `nestjs-reliable-messaging/health`: Terminus indicators for the Kubernetes liveness
 * and readiness probes. The only entry point that loads `@nestjs/terminus` (an optional peer).
 */

/** The module that provides `MessagingHealth`; import it in your health controller's module. */
export { ReliableMessagingHealthModule } from './health/reliable-messaging-health.module';
/** Terminus indicators for liveness and readiness (`/health/live`, `/health/ready`). */
export { MessagingHealth } from './health/messaging-health.service';
