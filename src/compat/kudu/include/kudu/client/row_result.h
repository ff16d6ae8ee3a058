#pragma once

// KuduRowResult: the older name of a scanned row.

#include "kudu/client/scan_batch.h"

namespace kudu {
namespace client {

typedef KuduScanBatch::RowPtr KuduRowResult;

}  // namespace client
}  // namespace kudu
