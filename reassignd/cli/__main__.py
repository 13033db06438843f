from reassignd.cli import main

raise SystemExit(main())
