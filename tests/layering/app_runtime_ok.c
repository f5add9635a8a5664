/* tests/layering: an app/runtime source that includes what runtime may see (its own folder, ops,
 * config and the libraries below app/); must compile (the control of the probes below). */
#include "app/config/config.h"
#include "app/ops/history.h"
#include "app/runtime/pipeline.h"
#include "ingest/consumer.h"
