/// The words of `latchkey generate --words N`: 2,048 common English words, so that each word
/// of a passphrase drawn uniformly from them carries log2(2048) = 11 bits (6 words: 66 bits).
///
/// Latchkey's own list, written for it, not taken from another (EFF's lists, Diceware, BIP 39).
/// Every word is 3 to 8 lowercase ASCII letters, common and concrete, spelled one way on both
/// sides of the Atlantic (no color/colour, gray/grey, theater/theatre), with no homophone that
/// a listener could write differently (no sea/see, knight/night, flour/flower: one spoken
/// passphrase, one spelling), no word that is another word of the list plus "s" or "es", no
/// plural-only words, proper names or unpleasant words. `WordListTests` check the count, that
/// no word repeats, and the letters and lengths; changing the list changes the bits per word
/// stated in `generate --help`, which the tests also check.
enum WordList {
    /// The words, in alphabetical order (split once, when a passphrase is first made).
    static let words: [Substring] = text.split { $0 == " " || $0 == "\n" }

    /// The bits each word carries: log2 of the list's size, when that is a power of two.
    static let bitsPerWord = 11

    private static let text = """
        able accent accept account acorn acrobat action active actor adapt add admire adopt adult advice
        advise age agent agile agree aim airport alarm alert alien alive alley allow ally almond amber ample
        amuse anchor ancient angel anger angle ankle answer antelope antenna anthem appear applause apple
        apply apricot apron arc archery arctic area arena argue arm arrange arrive arrow art artist ash ask
        aspen asteroid atlas attach attend attic aurora author autumn avenue avoid awake aware axis axle
        azure baby back backpack bacon badge badger bag bagel bake baker bakery balance balcony bald ball
        ballad balloon bamboo banana band bandage banjo bank banker banquet bargain barge bark barley barn
        barrel baseball basement basic basil basin basket bat batch bathe battery bay beach beam beaver bed
        bedroom beef beer beetle beg begin behave beige belief bell belt bench bend bike bill bin bingo
        biology birch birth biscuit bison black blanket blender bless blind blink bliss blood bloom blouse
        blue blush boast boat bog boil boiler bold bolt bone bonus book boot border borrow boss bottle
        bounce bowl bowling box boxing bracelet brain branch brave breath breathe breeze bride bridge brief
        bright bring brisk broad bronze brooch brood brook brother brow brown brownie brunch brush bucket
        buckle bud budget build builder bulb bull bump bunch bundle burger burn burrow bus bush business
        busy butcher butter button buy cabbage cabin cabinet cable cactus cafe cake calf call calm camel
        camera camp campus canal candid candle candy canoe canvas canyon cap cape capital captain car
        caramel carbon card care careful cargo carpet carriage carry cart carve carving cash cashew castle
        casual cat catch cause cave cedar celery cellar cello century ceramic ceremony chain chair chalk
        champion chance change chapel chapter charge charity chart chase cheek cheer cheerful cheese chef
        chemist cherry chess chest chestnut chew chick chicken chief child chimney chin chisel choice choir
        chop chore chorus chrome church cider cinema circle citizen city civil claim clam clan clap clay
        clean clear clever cliff climb cling clinic cloak clock close closet cloth cloud cloudy clove clover
        clown club clue cluster clutch coach coast coat cobra cocoa coconut cod code coffee coil coin collar
        collect college colt comb come comet comfort common company compare compass compete composer concert
        cone connect cook cookie cool copper copy core corn corner cosmic cosmos cost cottage cotton couch
        cough count courage court cousin cove cover cow cowboy coyote crab cracker cradle craft crane crash
        crate crater crawl cream credit crib cricket crimson crisp cross crow crowd crown crumble crush cry
        crystal cub cube cucumber cumin cup cupcake cure curl curly curry curtain curve curved cushion
        custom cut cute cyan cycle cycling cyclone daily daisy damp dance dancer dare dark dash date dawn
        day deal debt decade decide deck deep defeat defend delay delight deliver delta den denim dense
        dentist depend describe design desk destiny detour develop dial diamond diary dig dill dine diner
        dinner dip direct discover dish district dive divide dizzy dock doctor dog doll dollar domain domino
        donkey door dot double doubt dove drag dragon drain drake draw drawer drawing dream dress dresser
        drift drill drink drip drive driver drone drop drought drum drummer dry duck duckling duke dull
        dumpling dune dusk dust dusty duty dwarf eager eagle ear early earn earring earth easy eat echo
        eclipse economy edge editor eel effect effort egg elbow elder elegant elf elk elm emerald emperor
        empire empty emu endless energy engine engineer enjoy enter envelope equal equator era errand escape
        even evening exact exist expand expect explain explore explorer extra eye fable fabric face fact
        factory fade fail failure fairy faith falcon false family famous fan fancy far farm farmer fashion
        fast fate father faucet fear feast fee felt fence fencing fennel fern ferret ferry festival fetch
        field fierce fig file fill filter final finch fine finger firm first fisher fit fix flamingo flap
        flash flask flat flint float flock flood floor fluffy flute fly foal foam fog fold folk follow fond
        foot football force forest forge forgive fork form formal fort fortune fox frame free freedom freeze
        freezer freight fresh fridge friend friendly frog frontier frost frown frozen fudge full fund fungus
        funnel funny future fuzzy galaxy gale gallery game garage garden garlic garnet gather gaze gazelle
        gear gecko gem general genie gentle ghost giant gift ginger giraffe give glacier glad glance glass
        globe glory glossy glove glow glue goal goat goblin gold golden golf gong good goose gorge gorilla
        gossip gown grab grace grammar grand grandma grandpa granite grape grasp grass grateful gravel gravy
        green greet grid griffin grill grin grind grip grocer groom ground group grove grow guard guess
        guide guitar gull gust gym habit hallway ham hammer hamster hand handbag handle handy hang happen
        happy hardy harmony harp harsh hat hatch hawk hazel head health healthy heap heart heat heater
        heather heavy hedge helmet help helper helpful hen hero heron hiccup hidden hide highway hike hill
        hinge hint hip hippo history hive hockey hold holiday hollow home honest honey hood hoodie hook hoop
        hop hope horizon horn hornet hospital host hot hotel house hover hub hug huge hull hum humble hungry
        hunt hunter hurry husband hut hyena ice iceberg icy idea ideal igloo ignore iguana image imagine
        improve include income indigo industry infant inform inspect instant invent invite iris iron island
        itch ivory ivy jacket jade jaguar jar jasmine jaw jay jelly jet job jog join joke jolly journal
        journey joy judge judo jug juggle juggler juice juicy jumbo jump jumper jungle just justice kale
        karate kayak keen keep ketchup kettle key keyboard khaki kick kid kidney kind kindness king kingdom
        kitchen kite kitten kiwi knee kneel knife koala lace ladder ladle lady lagoon lair lake lamb lamp
        land language lantern laptop large lark lash last latch late laugh lava lavender law lawyer lazy
        leader leaf league lean leap learn leather leave leg legacy legal legend lemon lemonade lend lentil
        leopard letter lettuce level lever liberty library life lift light like likely lilac lily lime limp
        line linen lion lip list listen litter little live lively liver lizard load lobby lobster local lock
        lodge logic long look loop loose lord lotus loud love lovely loyal luck lucky luggage lunar lunch
        lung lyric magenta magic magician magnet magnolia magpie major manage mango map maple marathon
        marble march margin mark market maroon marry marsh mask mason mast match math mauve meadow measure
        mellow melody melon melt member memo memory mend merchant mercury mercy mermaid merry mesh message
        meteor method metro middle midnight mighty mild milk mill millet mine mint minute mirror mission
        misty mitten mix mixer model modern modest moist mole moment money monitor monk monkey monsoon month
        moon mosaic moss motel moth mother motion motive motor mountain mouse mouth move mow mud muffin mug
        mule mural museum mushroom music mustard mystery myth nail name nap napkin narrow nation native navy
        neat neck necklace needle nephew nerve nervous nest net netball nettle newt nice nickel niece nimble
        ninja noble nod noise noisy nomad noodle noon normal note notice novel nurse nut nutmeg oak oasis
        oat obey observe ocean octopus odd offer office oil olive onion opal open opera orange orbit orchard
        orchid order organ origin ostrich otter outcome outer oval oven owl own owner oxygen oyster pack
        package paddle page paint painter painting palace palm pan pancake panda panther parasol parcel
        parent park parrot parsley parsnip partner party pass passport past pasta paste pasture pat patch
        path patient patio pattern peach peanut pearl pebble pecan peeler peep pelican pencil penguin penny
        people pepper perch perform phoenix phone photo phrase physics pianist piano pick pickle picnic
        picture pie pier pig pigeon piglet pike pile pill pillow pilot pin pinch pine pink pioneer pipe
        pirate pizza plan planet plant plate platinum play player plaza plead pleasant please pleasure plot
        pluck plug plumber plump pocket poem poet point poke poker polar polish polite pond pony pool pop
        popcorn poplar poppy porch pork porridge port portrait postcard pot potato potion potter pottery
        pound power prairie praise precise prefer prepare present press pretend pretty pretzel price pride
        prime prince princess print printer project promise proof protect proud provide prune public puck
        pudding puffin pull pulse puma pump pumpkin pun pup pupil puppet puppy pure purple purpose purse
        push puzzle pyramid python quack quail quarry queen quest question quick quiet quilt quiz rabbit
        raccoon race racket radio radish raft rainbow raisin ram ranch ranger rapid rare rat raven ravine
        razor reach ready realm reason rebel receive record red reduce redwood referee reflect refuse region
        relax relay release rely remain remedy remember remind remote remove repair repeat reply report
        reporter rescue result retire return reward rhino rhyme rib ribbon rice rich riddle ride rider ridge
        rigid rim rinse ripe rise risk ritual rival river roast robe robin robot rock rocket rocky roof
        rooster rope rosy rough round rowing royal rub ruby rudder rug rugby rugged rule ruler run rural
        rush rust rusty saddle safe safety saga sage sailing sailor salad salary salmon salsa salt salty
        same samurai sand sandal sandwich sandy sapphire saucer sausage save saw say scale scare scarf
        scarlet scatter scenic scheme scholar school science scold scone scooter score scrape scream screen
        sculptor seal search season second secret secure seek send sentence serene servant serve settle
        settler shady shaggy shake shallow shampoo shape share shark sharp shave shawl shed sheet shelf
        shelter sheriff shine shiny ship shirt shiver shoe shop shore short shoulder shout show shrimp shrub
        shrug shut shy sieve sigh signal silence silent silk silky silver simple sincere sing singer single
        sink sip sister sit skate sketch ski skill skin skip skirt skunk sky slang slate sled sleek sleep
        sleet sleeve slide slim slip slipper sloth slow slug small smart smell smile smith smoke smooth
        smoothie snack snail snake sneak sneaker sneeze sniff snore snow snowy soak soap soccer sock socket
        soda sofa soft soil solar soldier solid solve song sort sound soup sour space spare spark sparrow
        spatula speak speaker speed spell spend spicy spider spill spin spinach spine spiral spirit spoil
        sponge spoon sport spot spray spread spring sprint sprout spruce spy square squash squeak squeeze
        squid squirrel stable stack stadium stallion stamp stand star starfish start state station statue
        stay steady steep steer stem step stew sticky stiff still stingray stir stitch stocking stone stool
        stop store stork storm stormy story stove strange stranger stream street strength stretch strict
        strike string stripe stroll strong student studio study stuff sturdy suburb subway success sudden
        sugar suggest suitcase summer summit sunny sunrise sunset super supper supply support surf surgeon
        surprise survive sushi swallow swamp swan swap swarm sway sweat sweater sweep swift swim swing
        switch syrup system table tablet taco tailor talent talk tall tame tan tank tap tape tart task taste
        taxi teach teacher teal tease teddy teenager tell temple tempo tempt tender tennis tense tent
        terrace test thank thaw theory therapy thick thin think thistle thorn thought thread throat throw
        thumb thunder tiara ticket tickle tidy tie tiger tight timer tin tiny tip tiptoe tired title toast
        toaster today toddler toffee tofu tomato tomorrow tongue tooth topaz torch tornado tortoise total
        toucan touch tough tour tourist towel tower town toy trace track tractor trade trader trail train
        tram trap travel tray treat treaty tree tremble trend triangle tribe trick tricky trip triumph
        trivia troll trombone trophy trot trout truck true truffle trumpet trunk trust truth try tuba tug
        tugboat tulip tumble tune tunic tunnel turkey turnip turtle tutor twig twilight twin twine twist
        type ukulele umbrella umpire uncle unicorn union unique unite universe unlock untie upper urban use
        usual vague valid valley valve van vanilla vanish vast velvet vendor vent venture verse vest vet
        victory villa village vine vinegar violet violin viper visit vivid voice volcano voyage vulture
        waffle wage wagon waiter wake walk wall wallet walnut walrus wander want wardrobe warm warning wary
        wash washer wasp watch water wave wavy wealthy weary weasel weaver web welcome wet wheat whisk
        whisper whistle white wide wife wild willow win wind window windy wink winner winter wipe wire
        wisdom wise wish witty wizard wobble wonder wooden woods wool word work worker worm worry worthy
        wren wrench wrestle wrist writer yacht yak yarn yawn year yeast yell yellow yield yoga young youth
        zebra zigzag zinc zipper zone zoo zoom
        """
}
