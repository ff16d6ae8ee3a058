#pragma once

// MasterService (proto/master.proto) over gRPC's synchronous API: a thin adapter from RPCs to
// the CatalogManager. Every request is validated by the catalog manager before anything
// happens; errors cross the wire as themselves with ErrorDetailPB (rpc/rpc_status.h). Every
// method but ListMasters first checks that this master leads the catalog and has loaded it
// (UNAVAILABLE + NOT_THE_LEADER_MASTER / CATALOG_NOT_READY otherwise).
//
// Thread-safe (gRPC calls handlers concurrently).

#include <memory>

namespace grpc {
class Service;
}  // namespace grpc

namespace basalt {

class Master;

// The service for `master`, which must outlive it (and stop serving before it goes away).
std::unique_ptr<grpc::Service> NewMasterService(Master* master);

}  // namespace basalt
