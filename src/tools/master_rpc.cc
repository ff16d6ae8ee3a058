#include "tools/master_rpc.h"

#include "common/status_macros.h"

namespace basalt::tools {

absl::StatusOr<MasterTableSchema> GetMasterTableSchema(const std::string& master_addresses,
                                                       const std::string& table) {
  pb::GetTableSchemaRequestPB req;
  req.mutable_table()->set_table_name(table);
  MasterTableSchema out;
  BASALT_RETURN_IF_ERROR(
      CallMaster(master_addresses, &pb::MasterService::Stub::GetTableSchema, req, &out.pb));
  BASALT_ASSIGN_OR_RETURN(out.schema, Schema::FromPB(out.pb.schema()));
  BASALT_ASSIGN_OR_RETURN(out.partition_schema,
                          PartitionSchema::FromPB(out.pb.partition_schema(), out.schema));
  return out;
}

}  // namespace basalt::tools
