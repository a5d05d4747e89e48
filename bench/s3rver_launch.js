// Starts @20minutes/s3rver (its npm package lacks the bin file). Args as for its CLI.
require("@20minutes/s3rver/lib/cli.js").parseAsync(process.argv);
