// dist/ from scratch (tsc, strict): the package (src, with declarations) and the tests, as
// ../typescript builds its own (the same `build`).
import { fileURLToPath } from "node:url";

import { build } from "../../typescript/scripts/build.mjs";

build(fileURLToPath(new URL("..", import.meta.url)));
