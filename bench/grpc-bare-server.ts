// The physical reference of the gRPC figures: a bare @grpc/grpc-js server, in a process of its own like the API,
// serving ShouldRateLimit at the same path with a constant encoded RateLimitResponse (OK, one status with a limit and
// the RateLimit header fields, about the size of the API's answers) and nothing else: no decoding, auth or check.
// Prints its port on the first line of output; stops on SIGTERM.
import { Server, ServerCredentials, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import { constantRlsResponse, RLS_BYTES_METHOD } from './rls-wire';

const response = constantRlsResponse();
const server = new Server();
server.addService(
  { ShouldRateLimit: RLS_BYTES_METHOD },
  {
    ShouldRateLimit: (_call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) =>
      callback(null, response),
  },
);
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  process.stdout.write(`${port}\n`);
});
process.once('SIGTERM', () => server.forceShutdown());
