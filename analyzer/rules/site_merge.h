// Call sites that read alike are one site. Two stacks can differ only where
// a reader does not look: inside libtorch under the same line of train.py,
// or at two return addresses of one unsymbolized function. Listed apart
// they look like two places (and each looks smaller than the place is).
#pragma once

#include "rules.h"
#include "symbolizer.h"

namespace gpuscope::analyzer {

// The frames a site is shown by (Symbolizer::site_frames), the same number
// the text report prints.
inline constexpr size_t kSiteFramesShown = 3;

// Merges each finding's sites that call the same function from the same
// shown frames (counts and time added, the heaviest stack kept), heaviest
// first.
void merge_sites_shown_alike(const Symbolizer& symbols, Analysis* analysis);

}  // namespace gpuscope::analyzer
