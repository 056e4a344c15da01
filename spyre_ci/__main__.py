from spyre_ci.cli import main

main()
