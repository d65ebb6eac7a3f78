// How the process (or the capture) ended: what the end record says.
#pragma once

#include "gpuscope_generated.h"

namespace gpuscope::capture {

struct EndNote {
  fb::EndKind kind = fb::EndKind::Unknown;  // the step the exit status came from
  int exit_status = 0;
  // The first step, when a later one on the same way out changed the
  // status (format 1.3, Totals.began_kind); Unknown for a one-step end.
  fb::EndKind began_kind = fb::EndKind::Unknown;
  int began_status = 0;
};

}  // namespace gpuscope::capture
