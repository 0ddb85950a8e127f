// grpc.reflection.v1.ServerReflection (proto/reflection_v1.proto), beside the v1alpha service
// that Debian's gRPC 1.51 provides: clients that ask for v1 first (grpcurl, grpc_cli, Postman)
// got UNIMPLEMENTED. It answers from protobuf's generated descriptor pool, which holds every
// message and service this binary was built with, and lists the services the server it is
// registered on serves. AddTo() registers it on a ServerBuilder before BuildAndStart().
//
// Per stream, a file descriptor response holds the file asked for and the files it imports
// (transitively) that the stream has not sent yet, as gRPC's v1alpha service does. Unknown
// names are answered with an error_response (NOT_FOUND), never by ending the stream.
// Thread-safety: calls run concurrently; the service list is set once by the builder.
#ifndef TESSERA_SERVER_REFLECTION_V1_H_
#define TESSERA_SERVER_REFLECTION_V1_H_

#include <grpcpp/server_builder.h>

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "proto/reflection_v1.grpc.pb.h"

namespace tessera {

class ReflectionV1Service final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // Registers this service on `builder` and, once built, takes the server's service list.
  // The service must outlive the server.
  void AddTo(grpc::ServerBuilder* builder);

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

  // Fully-qualified names of the services served (set by the builder).
  void SetServiceNames(std::vector<std::string> names);

 private:
  // The answer to one request; `sent` holds the files this stream already sent.
  grpc::reflection::v1::ServerReflectionResponse Answer(
      const grpc::reflection::v1::ServerReflectionRequest& request,
      std::set<std::string>* sent) const;

  mutable std::mutex mu_;
  std::vector<std::string> service_names_;  // guarded by mu_
};

}  // namespace tessera

#endif  // TESSERA_SERVER_REFLECTION_V1_H_
