import sys

from kinetic_runtime.main import main

sys.exit(main())
