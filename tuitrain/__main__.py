from tuitrain.cli import main

raise SystemExit(main())
