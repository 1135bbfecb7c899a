import { describe, expect, it } from '@jest/globals';
import { errorMessage, errorStack } from './error-text';
import { scrubCredentials } from './scrub-credentials';

describe('scrubCredentials', () => {
  it.each([
    // URLs of every scheme lose their userinfo, whatever it holds.
    ['https://user:s3cret@host/path', 'https://***@host/path'],
    ['http://user:s3cret@127.0.0.1:8080/x?y=1', 'http://***@127.0.0.1:8080/x?y=1'],
    ['amqp://guest:guest@rabbit:5672/vhost', 'amqp://***@rabbit:5672/vhost'],
    ['amqps://app:s3cret@rabbit.example.com', 'amqps://***@rabbit.example.com'],
    ['postgres://app:s3cret@db:5432/orders', 'postgres://***@db:5432/orders'],
    ['postgresql://app@db/orders', 'postgresql://***@db/orders'],
    ['redis://:s3cret@cache:6379/0', 'redis://***@cache:6379/0'],
    [
      'mongodb+srv://u:s3cret@a.example.com,b.example.com/db',
      'mongodb+srv://***@a.example.com,b.example.com/db',
    ],
    ['HTTPS://User:S3cret@Host', 'HTTPS://***@Host'],
    ['postgres://app:p@ss@db/orders', 'postgres://***@db/orders'],
    ['postgres://app:p%40ss@db/orders', 'postgres://***@db/orders'],
    [
      'Request cannot be constructed from a URL that includes credentials: https://user:s3cret@host/receipts',
      'Request cannot be constructed from a URL that includes credentials: https://***@host/receipts',
    ],
    ['two: amqp://a:s3cret@h1, amqp://b:s3cret@h2', 'two: amqp://***@h1, amqp://***@h2'],
    ["url 'amqp://a:s3cret@h1' refused", "url 'amqp://***@h1' refused"],
    // Key-value secrets in query strings, connection strings, JSON and log lines.
    ['https://host/x?password=s3cret&page=2', 'https://host/x?password=***&page=2'],
    ['https://host/x?access_token=s3cret', 'https://host/x?access_token=***'],
    [
      'https://s3.example.com/b?X-Amz-Signature=s3cret&X-Amz-Date=1',
      'https://s3.example.com/b?X-Amz-Signature=***&X-Amz-Date=1',
    ],
    ['host=db user=app password=s3cret dbname=orders', 'host=db user=app password=*** dbname=orders'],
    ['Server=db;User Id=app;Pwd=s3cret;Database=orders', 'Server=db;User Id=app;Pwd=***;Database=orders'],
    ['Password=s3cret;Host=db', 'Password=***;Host=db'],
    ['token=s3cret', 'token=***'],
    ['secret: s3cret', 'secret: ***'],
    ['api_key=s3cret&x=1', 'api_key=***&x=1'],
    ['apikey=s3cret', 'apikey=***'],
    ['x-api-key: s3cret', 'x-api-key: ***'],
    ['{"password":"s3 cret","user":"app"}', '{"password":"***","user":"app"}'],
    ["{ client_secret: 's3cret' }", "{ client_secret: '***' }"],
    ['db_password = s3cret', 'db_password = ***'],
    // Authorization headers keep their scheme, lose their credentials.
    ['Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.s3cret', 'Authorization: Bearer ***'],
    ['authorization: Basic dXNlcjpzM2NyZXQ=', 'authorization: Basic ***'],
    ['{"authorization":"Basic dXNlcjpzM2NyZXQ="}', '{"authorization":"Basic ***"}'],
    ['Proxy-Authorization: s3cret', 'Proxy-Authorization: ***'],
    ['sent with Bearer eyJhbGciOiJIUzI1NiJ9.s3cret', 'sent with Bearer ***'],
  ])('%s → %s', (text, expected) => {
    expect(scrubCredentials(text)).toBe(expected);
  });

  it.each([
    'connect ECONNREFUSED 127.0.0.1:5432',
    'amqp://rabbit:5672/vhost',
    'https://host/path?page=2&sort=asc',
    'password authentication failed for user "app"',
    'the warehouse rejects this reservation',
    'mail ops@example.com about amqp://rabbit:5672',
    'the bearer of bad news',
    'bypass=1 passes=2 tokens=3',
    '    at PasswordService.reset (file:///app/dist/password.js:10:5)',
    "NOT_FOUND - no queue 'orders.dlq' in vhost '/'",
  ])('leaves text without credentials as it is: %s', (text) => {
    expect(scrubCredentials(text)).toBe(text);
  });

  it.each([
    ['dots', 'a.'.repeat(100_000)],
    ['hyphens', 'a-'.repeat(100_000)],
    ['scheme characters', 'a+'.repeat(100_000)],
    ['userinfo separators', 'a://b@'.repeat(30_000)],
    ['key prefixes', 'x_password'.repeat(20_000)],
    ['an unclosed quoted secret', `password="${'\\'.repeat(100_000)}`],
  ])('scrubs 200 KB of %s in linear time', (_name, text) => {
    const started = performance.now();
    scrubCredentials(text);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('scrubs the message and the stack of an error alike', () => {
    const error = new TypeError('fetch https://user:s3cret@host/x failed; token=s3cret');

    expect(errorMessage(error)).toBe('fetch https://***@host/x failed; token=***');
    expect(errorMessage('amqp://guest:s3cret@rabbit')).toBe('amqp://***@rabbit');
    expect(errorStack(error)).toContain('fetch https://***@host/x failed; token=***');
    expect(errorStack(error)).not.toContain('s3cret');
  });
});
