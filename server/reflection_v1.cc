#include "server/reflection_v1.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/impl/server_builder_plugin.h>
#include <grpcpp/impl/server_initializer.h>

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

namespace rv1 = ::grpc::reflection::v1;
using google::protobuf::DescriptorPool;
using google::protobuf::FileDescriptor;

// A builder plugin only to learn the server's service names: ServerInitializer is the one
// public way to read them, and Finish() runs once every service (health and v1alpha reflection
// included) is registered.
class ServiceListPlugin : public grpc::ServerBuilderPlugin {
 public:
  explicit ServiceListPlugin(ReflectionV1Service* service) : service_(service) {}
  std::string name() override { return "tessera_reflection_v1"; }
  void InitServer(grpc::ServerInitializer*) override {}
  void Finish(grpc::ServerInitializer* si) override {
    service_->SetServiceNames(*si->GetServiceList());
  }
  void ChangeArguments(const std::string&, void*) override {}

 private:
  ReflectionV1Service* service_;
};

class ServiceListOption : public grpc::ServerBuilderOption {
 public:
  explicit ServiceListOption(ReflectionV1Service* service) : service_(service) {}
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->push_back(std::make_unique<ServiceListPlugin>(service_));
  }

 private:
  ReflectionV1Service* service_;
};

void SetError(grpc::StatusCode code, std::string message, rv1::ServerReflectionResponse* r) {
  r->mutable_error_response()->set_error_code(code);
  r->mutable_error_response()->set_error_message(std::move(message));
}

// `file` and its imports, each once per stream (`sent`), the file asked for first.
void AddFile(const FileDescriptor* file, std::set<std::string>* sent,
             rv1::FileDescriptorResponse* out) {
  if (!sent->insert(file->name()).second) return;
  google::protobuf::FileDescriptorProto proto;
  file->CopyTo(&proto);
  out->add_file_descriptor_proto(proto.SerializeAsString());
  for (int i = 0; i < file->dependency_count(); ++i) AddFile(file->dependency(i), sent, out);
}

void AnswerWithFile(const FileDescriptor* file, const std::string& what,
                    std::set<std::string>* sent, rv1::ServerReflectionResponse* r) {
  if (file == nullptr) return SetError(grpc::StatusCode::NOT_FOUND, what, r);
  // A file asked for again is sent again; only its imports are sent once per stream.
  sent->erase(file->name());
  AddFile(file, sent, r->mutable_file_descriptor_response());
}

}  // namespace

void ReflectionV1Service::AddTo(grpc::ServerBuilder* builder) {
  builder->RegisterService(this);
  builder->SetOption(std::make_unique<ServiceListOption>(this));
}

void ReflectionV1Service::SetServiceNames(std::vector<std::string> names) {
  std::lock_guard<std::mutex> lock(mu_);
  service_names_ = std::move(names);
}

rv1::ServerReflectionResponse ReflectionV1Service::Answer(const rv1::ServerReflectionRequest& q,
                                                          std::set<std::string>* sent) const {
  const DescriptorPool* pool = DescriptorPool::generated_pool();
  rv1::ServerReflectionResponse r;
  r.set_valid_host(q.host());
  *r.mutable_original_request() = q;
  switch (q.message_request_case()) {
    case rv1::ServerReflectionRequest::kListServices: {
      std::lock_guard<std::mutex> lock(mu_);
      for (const std::string& name : service_names_) {
        r.mutable_list_services_response()->add_service()->set_name(name);
      }
      break;
    }
    case rv1::ServerReflectionRequest::kFileByFilename:
      AnswerWithFile(pool->FindFileByName(q.file_by_filename()),
                     absl::StrCat("no file ", q.file_by_filename()), sent, &r);
      break;
    case rv1::ServerReflectionRequest::kFileContainingSymbol:
      AnswerWithFile(pool->FindFileContainingSymbol(q.file_containing_symbol()),
                     absl::StrCat("no symbol ", q.file_containing_symbol()), sent, &r);
      break;
    case rv1::ServerReflectionRequest::kFileContainingExtension: {
      const rv1::ExtensionRequest& e = q.file_containing_extension();
      const google::protobuf::Descriptor* type = pool->FindMessageTypeByName(e.containing_type());
      const google::protobuf::FieldDescriptor* extension =
          type == nullptr ? nullptr : pool->FindExtensionByNumber(type, e.extension_number());
      AnswerWithFile(
          extension == nullptr ? nullptr : extension->file(),
          absl::StrCat("no extension ", e.extension_number(), " of ", e.containing_type()), sent,
          &r);
      break;
    }
    case rv1::ServerReflectionRequest::kAllExtensionNumbersOfType: {
      const google::protobuf::Descriptor* type =
          pool->FindMessageTypeByName(q.all_extension_numbers_of_type());
      if (type == nullptr) {
        SetError(grpc::StatusCode::NOT_FOUND,
                 absl::StrCat("no message type ", q.all_extension_numbers_of_type()), &r);
        break;
      }
      std::vector<const google::protobuf::FieldDescriptor*> extensions;
      pool->FindAllExtensions(type, &extensions);
      rv1::ExtensionNumberResponse* numbers = r.mutable_all_extension_numbers_response();
      numbers->set_base_type_name(type->full_name());
      for (const auto* extension : extensions) numbers->add_extension_number(extension->number());
      break;
    }
    case rv1::ServerReflectionRequest::MESSAGE_REQUEST_NOT_SET:
      SetError(grpc::StatusCode::INVALID_ARGUMENT, "the request asks for nothing", &r);
      break;
  }
  return r;
}

grpc::Status ReflectionV1Service::ServerReflectionInfo(
    grpc::ServerContext*,
    grpc::ServerReaderWriter<rv1::ServerReflectionResponse, rv1::ServerReflectionRequest>* stream) {
  std::set<std::string> sent;
  rv1::ServerReflectionRequest request;
  while (stream->Read(&request)) {
    if (!stream->Write(Answer(request, &sent))) break;
  }
  return grpc::Status::OK;
}

}  // namespace tessera
