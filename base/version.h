// The Tessera version, as `tessera --version` prints it and tuning records store it. Keep in
// step with project(VERSION) in the top-level CMakeLists.txt.
#ifndef TESSERA_BASE_VERSION_H_
#define TESSERA_BASE_VERSION_H_

namespace tessera {

inline constexpr char kTesseraVersion[] = "0.1.0";

}  // namespace tessera

#endif  // TESSERA_BASE_VERSION_H_
